"""Analysis: per-thread totals and rules (``threads``), the verdict and its wording
(``verdict``, ``sample_report``), and the comparison of two profiles (``diff``); data in,
data out. May import ``offconv.model``, ``offconv.inputs`` and ``offconv.sched``."""
