"""Memory health: for every approved memory block, whether it helps (cited, restated, contradicted, corrected,
stale) and when a person last verified it."""
