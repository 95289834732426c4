"""Figures: one shared look (``style``), charts several lessons draw (``charts``), and one module per
lesson with that lesson's own figures. Every function returns a matplotlib Figure."""

from . import (
               bank_conflicts,
               charts,
               coalescing,
               gemm,
               littles_law,
               memory_pictures,
               reduce,
               roofline,
               style,
               tensor_cores,
)
from .style import human_bytes, save, show_alt_text_in_jupyter, with_alt

show_alt_text_in_jupyter()

__all__ = ["bank_conflicts", "charts", "coalescing", "gemm", "human_bytes", "littles_law", "memory_pictures",
           "reduce", "roofline", "save", "style", "tensor_cores", "with_alt"]
