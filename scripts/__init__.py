"""scripts/record.sh, installed as the package data offconv.scripts (see offconv.recorder)."""
