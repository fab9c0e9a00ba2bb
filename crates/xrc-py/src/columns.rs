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
use pyo3::types::{PyDict, PyMemoryView};

use xrc_core::metrics::{OwnedColumn, Recorder};

/// One column's values, lent to Python as bytes.
#[pyclass(frozen, module = "xrc._core")]
pub struct ColumnBuf {
    col: OwnedColumn,
}

impl ColumnBuf {
    /// The column as the buffer's (dtype, bytes): NumPy's type string and
    /// the values' memory, which on a little-endian machine is their
    /// little-endian bytes.
    fn bytes(&self) -> (&'static str, &[u8]) {
        /// `v`'s memory as bytes.
        fn raw<T: Plain>(v: &[T]) -> &[u8] {
            // SAFETY: `T` is one of f64, u64, u32, u8 (`Plain`): no padding
            // and no invalid bit patterns, so its `size_of_val(v)` bytes
            // may be read as `u8`s, whose alignment (1) every pointer has;
            // the result borrows `v`, so the memory outlives it.
            unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
        }
        match &self.col {
            OwnedColumn::F64(v) => ("<f8", raw(v)),
            OwnedColumn::U64(v) => ("<u8", raw(v)),
            OwnedColumn::U32(v) => ("<u4", raw(v)),
            OwnedColumn::U8(v) => ("|u1", raw(v)),
        }
    }
}

/// The column types whose memory is read as bytes.
trait Plain: Copy {}
impl Plain for f64 {}
impl Plain for u64 {}
impl Plain for u32 {}
impl Plain for u8 {}

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
pub fn take_tables<'py>(py: Python<'py>, rec: &mut Recorder) -> PyResult<Bound<'py, PyDict>> {
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
    if cfg!(target_endian = "little") {
        return col;
    }
    match col {
        OwnedColumn::F64(v) => OwnedColumn::F64(v.into_iter().map(|x| f64::from_bits(x.to_bits().to_le())).collect()),
        OwnedColumn::U64(v) => OwnedColumn::U64(v.into_iter().map(u64::to_le).collect()),
        OwnedColumn::U32(v) => OwnedColumn::U32(v.into_iter().map(u32::to_le).collect()),
        OwnedColumn::U8(v) => OwnedColumn::U8(v),
    }
}
