"""Reports: store → report data (pure) → renderers (terminal, JSON, Markdown)."""
