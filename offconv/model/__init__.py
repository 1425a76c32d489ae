"""The model every layer shares: frames, records (SchedEvent, Sample, Interval), Profile,
the option objects, errors, units, display naming, and the format registry's types.
Imports nothing of offconv outside this package (the bottom layer)."""
