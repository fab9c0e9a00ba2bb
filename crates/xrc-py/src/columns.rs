//! Handing a run's rows to Python without copying them: each column's
//! vector is taken out of the recorder ([`Table::take_columns`]) and owned
//! by a Python object that lends its memory through the buffer protocol.
//! Python sees a read-only `memoryview` of the column's little-endian
//! bytes; NumPy and Arrow read it in place, and the vector is freed when
//! the last view of it goes.

use std::ffi::{c_int, c_void};

use pyo3::exceptions::PyBufferError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyMemoryView};

use xrc_core::metrics::{OwnedColumn, Recorder};

/// One column's values, lent to Python as bytes.
#[pyclass(frozen, module = "xrc._core")]
pub(crate) struct ColumnBuf {
    col: OwnedColumn,
}

impl ColumnBuf {
    /// The column as the buffer's (dtype, bytes): NumPy's type string and
    /// the values' memory (little-endian: see [`take_tables`]).
    fn bytes(&self) -> (&'static str, &[u8]) {
        match &self.col {
            OwnedColumn::F64(v) => ("<f8", raw(v)),
            OwnedColumn::U64(v) => ("<u8", raw(v)),
            OwnedColumn::U32(v) => ("<u4", raw(v)),
            OwnedColumn::U8(v) => ("|u1", raw(v)),
        }
    }
}

/// `v`'s memory as bytes.
fn raw<T: Plain>(v: &[T]) -> &[u8] {
    // SAFETY: `T` is one of f64, u64, u32, u8 (the only `Plain` types):
    // no padding and no invalid bit patterns, so its `size_of_val(v)`
    // bytes may be read as `u8`s, whose alignment (1) every pointer has;
    // the result borrows `v`, so the memory outlives it.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
}

/// The column types whose memory is read as bytes (only these four: the
/// byte view's safety rests on it).
pub(crate) trait Plain: Copy {
    /// The value whose memory holds this one's little-endian bytes.
    fn to_le(self) -> Self;
}
impl Plain for f64 {
    fn to_le(self) -> Self {
        f64::from_bits(self.to_bits().to_le())
    }
}
impl Plain for u64 {
    fn to_le(self) -> Self {
        u64::to_le(self)
    }
}
impl Plain for u32 {
    fn to_le(self) -> Self {
        u32::to_le(self)
    }
}
impl Plain for u8 {
    fn to_le(self) -> Self {
        self
    }
}

/// `v`'s values as little-endian bytes in a new Python bytes object: one
/// copy of their memory (for series made on the spot, the emulator's).
pub(crate) fn le_bytes<'py, T: Plain>(py: Python<'py>, v: &[T]) -> Bound<'py, PyBytes> {
    if cfg!(target_endian = "little") {
        return PyBytes::new(py, raw(v));
    }
    let le: Vec<T> = v.iter().map(|x| x.to_le()).collect();
    PyBytes::new(py, raw(&le))
}

#[pymethods]
impl ColumnBuf {
    /// A read-only, one-dimensional buffer of unsigned bytes over the
    /// column's memory (`PyBuffer_FillInfo`, which also holds a reference
    /// to this object for as long as the buffer is held).
    unsafe fn __getbuffer__(slf: Bound<'_, Self>, view: *mut ffi::Py_buffer, flags: c_int) -> PyResult<()> {
        if view.is_null() {
            return Err(PyBufferError::new_err("no Py_buffer to fill"));
        }
        let (_, bytes) = slf.get().bytes();
        // SAFETY: `view` is the interpreter's, non-null; the memory is
        // owned by this frozen object, which never changes it and which
        // the view keeps alive (FillInfo stores a new reference in
        // `view.obj`). Read-only: a writable request fails with
        // BufferError, which FillInfo sets.
        let rc = unsafe {
            ffi::PyBuffer_FillInfo(
                view,
                slf.as_ptr(),
                bytes.as_ptr() as *mut c_void,
                bytes.len() as ffi::Py_ssize_t,
                1,
                flags,
            )
        };
        if rc == -1 {
            return Err(PyErr::fetch(slf.py()));
        }
        Ok(())
    }

    /// Nothing to do: the memory lives as long as the object.
    unsafe fn __releasebuffer__(&self, _view: *mut ffi::Py_buffer) {}
}

/// Takes every row `rec` holds: `{table: {column: (dtype, memoryview)}}`,
/// leaving its tables empty. On a big-endian machine the values are
/// turned to little-endian in place first (the dtypes say little-endian).
pub(crate) fn take_tables<'py>(py: Python<'py>, rec: &mut Recorder) -> PyResult<Bound<'py, PyDict>> {
    let tables = PyDict::new(py);
    for t in rec.tables_mut() {
        let cols = PyDict::new(py);
        for (name, col) in t.take_columns() {
            let buf = Bound::new(py, ColumnBuf { col: to_le(col) })?;
            let dtype = buf.get().bytes().0;
            cols.set_item(name, (dtype, PyMemoryView::from(buf.as_any())?))?;
        }
        tables.set_item(t.name(), cols)?;
    }
    Ok(tables)
}

/// The column with its values' bytes in little-endian order.
fn to_le(col: OwnedColumn) -> OwnedColumn {
    fn each<T: Plain>(v: Vec<T>) -> Vec<T> {
        if cfg!(target_endian = "little") {
            v
        } else {
            v.into_iter().map(T::to_le).collect()
        }
    }
    match col {
        OwnedColumn::F64(v) => OwnedColumn::F64(each(v)),
        OwnedColumn::U64(v) => OwnedColumn::U64(each(v)),
        OwnedColumn::U32(v) => OwnedColumn::U32(each(v)),
        OwnedColumn::U8(v) => OwnedColumn::U8(v),
    }
}
