"""Real-time emulation: real network stacks through xrc's link models.

- :mod:`.testbed`: two network namespaces joined by the emulator (TUN
  devices), with clean-up on every exit path;
- :mod:`.linuxref`: ``xrc validate-linux``, real Linux TCP against the
  simulator on the same cases.
"""
