"""The graph IR shared by Symbol, hybridize, the compiler and the file formats."""
from .graph import Entry, Graph, GraphError, Node, topo_order  # noqa: F401
