"""Inputs: ``source`` opens a path, ``-`` or a compressed file; one module per format
(perf script, perf.data in ``perf_data/``, folded, bcc, bpftrace text and JSON), each a pure
generator of model records ending with its ``FORMAT = InputFormat(...)``, listed in
``offconv.model.registry``. May import ``offconv.model`` only."""
