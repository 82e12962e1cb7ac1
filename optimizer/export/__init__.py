"""`export`: sub-models per plan subgraph, a manifest, and the vendor build files."""

from optimizer.backends._submodels import SubModel, run_chain, split_model
from optimizer.export._export import EXPORT_SCHEMA, export_plan, read_plan

__all__ = ["EXPORT_SCHEMA", "SubModel", "export_plan", "read_plan", "run_chain", "split_model"]
