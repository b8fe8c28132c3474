//! User callbacks run at the end of a capture or a reduction: their exceptions go to
//! `on_error`, and `on_error`'s own to `sys.unraisablehook`.

use pyo3::prelude::*;

/// Call `hook(arg)`; an exception goes to [`report_error`].
pub fn call_hook(
    py: Python<'_>,
    hook: &Option<Py<PyAny>>,
    arg: Bound<'_, PyAny>,
    on_error: &Option<Py<PyAny>>,
) {
    let Some(f) = hook else { return };
    if let Err(e) = f.call1(py, (arg,)) {
        report_error(py, on_error, e);
    }
}

/// Hand `err` to `on_error`, or to `sys.unraisablehook` without one.
pub fn report_error(py: Python<'_>, on_error: &Option<Py<PyAny>>, err: PyErr) {
    match on_error {
        Some(h) => {
            if let Err(e2) = h.call1(py, (err.value(py).clone(),)) {
                e2.write_unraisable(py, Some(h.bind(py)));
            }
        }
        None => err.write_unraisable(py, None),
    }
}
