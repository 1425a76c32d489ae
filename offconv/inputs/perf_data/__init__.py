"""The perf.data input: ``reader`` (its ``FORMAT``) converts a recording to perf script text
by running perf (``spawn`` starts it; ``kallsyms`` gives it the kernel symbols it needs;
``header`` reads the file's header for both). May import ``offconv.model`` and the other
inputs."""
