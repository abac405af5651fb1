"""Plotting (placeholder, being written)."""


def plot_diagram(diagram, ax=None, **style):
    raise NotImplementedError


def plot_reliability_diagram(f, y, ax=None, **kw):
    raise NotImplementedError


def plot_binned_diagram(f, y, ax=None, **kw):
    raise NotImplementedError
