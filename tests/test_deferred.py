"""labs.core.physics.deferred: numpy imported on first use, and the roofline on plain floats."""

import subprocess
import sys
import textwrap


def _run(code: str) -> str:
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout.strip()


def test_scalar_roofline_math_does_not_import_numpy():
    out = _run("""
        import sys
        from labs.core.physics import hardware, roofline
        from labs.core.ui.figures import charts, labelplace  # they import numpy deferred
        h = hardware.get("h100-sxm")
        t = roofline.attainable_tflops(10.0, h, "bf16")
        r = roofline.rho(10.0, h, "bf16")
        print(type(t).__name__, type(r).__name__, "numpy" in sys.modules)
    """)
    assert out == "float float False"


def test_first_use_imports_numpy_and_arrays_still_work():
    out = _run("""
        import sys
        from labs.core.physics import hardware, roofline
        from labs.core.physics.deferred import numpy as np
        h = hardware.get("h100-sxm")
        a = roofline.attainable_tflops([1.0, 1e4], h, "bf16")
        b = roofline.attainable_tflops(np.array([1.0, 1e4]), h, "bf16")
        print(type(a).__name__, (a == b).all(), "numpy" in sys.modules, np.pi == sys.modules["numpy"].pi)
    """)
    assert out == "ndarray True True True"


def test_scalar_and_array_answers_agree():
    from labs.core.physics import hardware, roofline
    h = hardware.get("h100-sxm")
    for ai in (0.5, 10.0, roofline.ridge_point(h, "bf16"), 1e5):
        assert roofline.attainable_tflops(ai, h, "bf16") == float(
            roofline.attainable_tflops([ai], h, "bf16")[0])


def test_deferred_module_reads_through_and_keeps_what_it_read():
    from labs.core.physics.deferred import DeferredModule
    m = DeferredModule("math")
    assert "deferred module 'math'" in repr(m)
    assert m.sqrt(4.0) == 2.0 and "sqrt" in vars(m)
    try:
        m.no_such_name
    except AttributeError:
        pass
    else:
        raise AssertionError("a missing attribute must raise AttributeError")


def test_is_ndarray_answers_without_importing_numpy():
    out = _run("""
        import sys
        from labs.core.physics.deferred import is_ndarray
        print(is_ndarray([1.0]), is_ndarray(2.0), "numpy" in sys.modules)
        import numpy
        print(is_ndarray(numpy.array([1.0])), is_ndarray([1.0]))
    """)
    assert out.splitlines() == ["False False False", "True False"]
