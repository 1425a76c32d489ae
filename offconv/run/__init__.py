"""Running an input through the layers: ``pipeline.load`` (open, cut into chunks, fold each
into a mergeable summary inline or in workers, merge in order, build the Profile).
May import every layer below it (model, inputs, sched, analysis); never ``outputs``."""
