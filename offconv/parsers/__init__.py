"""One module per input format; each is a pure generator of records and ends with its
``FORMAT = InputFormat(...)`` record, listed in offconv.formats."""
