"""Outputs: one module per format (folded, svg/, speedscope, pprof, hist, report, json,
diff report), each a stateless ``render(profile, out, opts)`` ending with its
``FORMAT = OutputFormat(...)``. May import model, inputs, sched and analysis; never ``run``."""
