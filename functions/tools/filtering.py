"""The tools' `filter` parameter: the HTTP body field's, shape and all (functions/views/filter_shape.py)."""

from functions.views.filter_shape import FilterParameter

__all__ = ["FilterParameter"]
