"""What a cell assigns, read and never run: the report's choices, the predictions and the copying list use it."""

import ast


def assignments(source):
    """[(name, value node)] of each top-level ``name = ...`` of ``source``, in order. A syntax error gives []."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    return [(node.targets[0].id, node.value) for node in tree.body
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)]


def literal_assignments(source):
    """[(name, value)] of each top-level ``name = ...`` of ``source``, in order; ``value`` is the literal
    assigned (a number, a string, a tuple...) or None when it is not a literal. A syntax error gives []."""
    found = []
    for name, node in assignments(source):
        try:
            value = ast.literal_eval(node)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            value = None
        found.append((name, value))
    return found
