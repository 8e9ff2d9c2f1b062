"""``python -m fattorus.qos``: the process-level QoS study (:mod:`fattorus.app.qos`)."""

if __name__ == "__main__":  # first: a Ctrl-C while the imports below load is one line
    from fattorus import interrupt

    interrupt.on_start("fattorus.qos")

from fattorus.app.qos import main

if __name__ == "__main__":
    main()
