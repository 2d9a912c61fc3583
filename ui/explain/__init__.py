"""The Explain heads page's own pieces: the views of one sentence (heads switched off, a cell's arithmetic, what-if,
searches and models compared), attribution, the lenses, patching, every head at once, and the HTML report."""
