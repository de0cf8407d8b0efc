"""The embedded demo: sample rollouts and the demo-home builder."""
