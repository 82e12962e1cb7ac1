"""Model edits: candidate rewrites per vendor rule, their predicted gain, and verified application."""

from optimizer.edits._rewrite import Edit, apply_edits, candidate_edits
from optimizer.edits._suggest import Suggestion, edit, suggest

__all__ = ["Edit", "Suggestion", "apply_edits", "candidate_edits", "edit", "suggest"]
