"""The model: its configuration (config), the layers of the paper (attention, embedding, blocks, the output
projection's Linear in linear, and the model itself in layers), dropout and the loss it trains with (dropout,
loss), and the checkpoint format's one owner (checkpoint)."""
