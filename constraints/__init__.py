"""The hardware catalog: one TOML file per target family (installed as optimizer.constraints)."""
