"""Review in depth: a run's diff as hunks with stable ids, the evidence behind each, and partial decisions."""
