"""The hardware catalog: targets, figures and vendor rules, loaded from constraints/*.toml."""

from optimizer.catalog._checks import CHECKS, CONDITIONS
from optimizer.catalog._load import extra_family, family_files, load_catalog
from optimizer.catalog._schema import (
    DEFAULT_TENSORRT,
    TENSORRT_VERSIONS,
    Catalog,
    Family,
    Figure,
    OpSupport,
    Rule,
    Target,
)
from optimizer.catalog._view import LayerView
from optimizer.enums import PRECISIONS

__all__ = ["CHECKS", "CONDITIONS", "DEFAULT_TENSORRT", "PRECISIONS", "TENSORRT_VERSIONS", "Catalog", "Family",
           "Figure", "LayerView", "OpSupport", "Rule", "Target", "extra_family", "family_files", "load_catalog"]
