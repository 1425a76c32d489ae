"""SVG flame graphs in pure Python: flamegraph.pl's options and look, interactive
(hover, click to zoom, regex search, URL state), deterministic bytes.

The renderer is ``graph`` (``render``, ``FORMAT``); ``layout`` places the frames, ``write``
writes the SVG, ``palette`` colours it. This package's own module is empty, so that the
command line's help (which lists the palette names) does not load the layout and the writer.
"""
