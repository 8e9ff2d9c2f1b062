"""``python -m fattorus.qos``: the process-level QoS study (:mod:`fattorus.app.qos`)."""

from fattorus.app.qos import main

if __name__ == "__main__":
    main()
