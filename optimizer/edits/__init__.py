"""Model edits: candidate rewrites per vendor rule (optimizer.rewrite), their predicted gain, and verified
application (the suggest and edit workflows, which re-plan, so they sit above optimizer.plan)."""

from optimizer.edits._suggest import Suggestion, edit, suggest
from optimizer.rewrite import Edit, apply_edits, candidate_edits

__all__ = ["Edit", "Suggestion", "apply_edits", "candidate_edits", "edit", "suggest"]
