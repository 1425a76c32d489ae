"""lark grammars of the text formats (installed as the package offconv.grammars)."""
