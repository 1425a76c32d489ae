"""offconv: Linux scheduler traces -> where does it wait, and is it waiting for a CPU
(run-queue latency) or for something else (blocked time)?"""
__version__ = "0.1.0"
