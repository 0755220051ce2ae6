"""Models and inspectors: traffic, occupancy, waves, shared-memory banks, SASS."""
