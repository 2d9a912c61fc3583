"""The Dataset page's own pieces: the split picker, the background computation, the sentence table with its
links, the slices and the projector."""
