"""The hardware catalog: targets, figures and vendor rules, loaded from constraints/*.toml."""

from optimizer.catalog._checks import CHECKS, CONDITIONS, LayerView
from optimizer.catalog._load import FAMILY_FILES, PRECISIONS, load_catalog
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

__all__ = ["CHECKS", "CONDITIONS", "DEFAULT_TENSORRT", "FAMILY_FILES", "PRECISIONS", "TENSORRT_VERSIONS", "Catalog",
           "Family", "Figure", "LayerView", "OpSupport", "Rule", "Target", "load_catalog"]
