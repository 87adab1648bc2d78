"""The iteration driver behind `leaf train --iteration N`: stages, their state file, reports, consolidation."""
