"""The Teacher's guide page's own pieces: the documents it opens in the app."""
