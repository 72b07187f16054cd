"""The live dashboard (Dash) over the store; figures come from llmbench.report."""
