"""Triage: the minimiser, predicates, expectations, the Markdown report and trace comparison."""
