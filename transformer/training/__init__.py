"""Training: presets, schedules and TrainConfig (recipe), the run on disk (run), its setup (setup), the loop
(loop), dev evaluation, precision, the distributed start, batching, TensorBoard logging, and `transformer-train`
(cli)."""
