"""Every chart of the app: the builders, the theme, and the one function that draws a chart on a page."""
