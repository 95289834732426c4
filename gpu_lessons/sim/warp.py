def install() -> None:  # placeholder until the warp primitives land
    pass
