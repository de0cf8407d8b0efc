"""Terminal UI (Textual). Domain code never imports this package."""
