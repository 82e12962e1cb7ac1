"""Model rewrites below the plan: candidate edits per vendor rule, their application, and the options they
add to the latency model (optimize --with-edits). The suggest/edit workflows that re-plan are optimizer.edits."""

from optimizer.rewrite._planning import add_edit_options
from optimizer.rewrite._rewrite import Edit, apply_edits, candidate_edits

__all__ = ["Edit", "add_edit_options", "apply_edits", "candidate_edits"]
