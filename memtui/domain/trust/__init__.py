"""Where each memory statement came from, and what that allows.

``classes`` derives a statement's trust class from the transcript items it cites, ``markers`` writes and reads the
``[trust:...]`` marker a statement carries in the memory files, ``hidden`` makes invisible characters visible (and
removes them from what memtui writes), ``injection`` flags imperative text that originates in tool output,
``annotate`` applies all of it to a Phase 1 output, ``enforce`` to a Phase 2 run, ``export`` to the read path.
"""
