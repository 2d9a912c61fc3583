"""Text: right to left (bidi), user and model text kept plain in Markdown, what the token pieces' marks mean."""
