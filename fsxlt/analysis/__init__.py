"""Analyses that explain FS-XLT results (METHOD.md §6 and §7)."""
