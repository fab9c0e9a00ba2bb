//! A thin safe layer over the few libbpf calls the loader makes: open and
//! load an object from memory, find its maps and programs, attach a
//! struct_ops map and a cgroup program as links, pin and unpin, read and
//! write map entries by file descriptor, and drain a ring buffer.
//!
//! Every libbpf call here returns NULL or a negative number on failure and
//! leaves the cause in `errno` (libbpf 1.x); each wrapper turns that into
//! an [`std::io::Error`] named after the call.

use std::ffi::{c_void, CString};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::Path;

use libbpf_sys as sys;

/// `what` failed with errno, or with a negative return value `rc`.
fn err(what: &str, rc: i32) -> io::Error {
    let e = if rc < 0 {
        io::Error::from_raw_os_error(-rc)
    } else {
        io::Error::last_os_error()
    };
    io::Error::new(e.kind(), format!("{what}: {e}"))
}

fn cstr(s: &str) -> io::Result<CString> {
    CString::new(s).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, format!("NUL in {s:?}")))
}

fn cpath(p: &Path) -> io::Result<CString> {
    cstr(
        p.to_str()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "path is not UTF-8"))?,
    )
}

/// A loaded BPF object. Closing it (drop) unloads its programs and maps
/// unless something else holds them: a link, a pin, a socket using them.
pub struct Object {
    obj: *mut sys::bpf_object,
    /// The ELF bytes, which libbpf reads while opening (kept alive with it).
    _elf: Vec<u8>,
}

// SAFETY: libbpf objects are not tied to a thread; `Object` is used from
// one thread at a time (it is not `Sync`).
unsafe impl Send for Object {}

impl Object {
    /// Opens `elf` (a BPF ELF object) and loads it into the kernel.
    pub fn open_load(name: &str, elf: &[u8]) -> io::Result<Object> {
        let elf = elf.to_vec();
        let cname = cstr(name)?;
        // SAFETY: bpf_object_open_opts is a plain C struct; zeroed is its
        // documented "no options" state once `sz` is set.
        let mut opts: sys::bpf_object_open_opts = unsafe { std::mem::zeroed() };
        opts.sz = std::mem::size_of::<sys::bpf_object_open_opts>() as _;
        opts.object_name = cname.as_ptr();
        // SAFETY: `elf` outlives the object (stored in it); opts and the
        // name are valid for the call.
        let obj = unsafe { sys::bpf_object__open_mem(elf.as_ptr() as *const c_void, elf.len() as _, &opts) };
        if obj.is_null() {
            return Err(err("bpf_object__open_mem", 0));
        }
        let o = Object { obj, _elf: elf };
        // SAFETY: `o.obj` is a valid, opened object.
        let rc = unsafe { sys::bpf_object__load(o.obj) };
        if rc != 0 {
            return Err(err(
                "bpf_object__load (the kernel refused the programs; libbpf's log above says why)",
                rc,
            ));
        }
        Ok(o)
    }

    fn map_ptr(&self, name: &str) -> io::Result<*mut sys::bpf_map> {
        let n = cstr(name)?;
        // SAFETY: valid object and NUL-terminated name.
        let m = unsafe { sys::bpf_object__find_map_by_name(self.obj, n.as_ptr()) };
        if m.is_null() {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("no map {name} in the object"),
            ));
        }
        Ok(m)
    }

    /// The file descriptor of map `name` (owned by the object).
    pub fn map_fd(&self, name: &str) -> io::Result<RawFd> {
        let m = self.map_ptr(name)?;
        // SAFETY: `m` belongs to the loaded object.
        let fd = unsafe { sys::bpf_map__fd(m) };
        if fd < 0 {
            return Err(err("bpf_map__fd", fd));
        }
        Ok(fd)
    }

    /// Pins map `name` at `path` (bpffs).
    pub fn pin_map(&self, name: &str, path: &Path) -> io::Result<()> {
        let m = self.map_ptr(name)?;
        let p = cpath(path)?;
        // SAFETY: valid map and path.
        let rc = unsafe { sys::bpf_map__pin(m, p.as_ptr()) };
        if rc != 0 {
            return Err(err(&format!("pinning map {name} at {}", path.display()), rc));
        }
        Ok(())
    }

    /// Registers the struct_ops map `name` (a congestion control) through a
    /// link: it stays registered while the link (or its pin) lives.
    pub fn attach_struct_ops(&self, name: &str) -> io::Result<Link> {
        let m = self.map_ptr(name)?;
        // SAFETY: `m` is a struct_ops map of the loaded object.
        let l = unsafe { sys::bpf_map__attach_struct_ops(m) };
        if l.is_null() {
            return Err(err(&format!("registering {name} (bpf_map__attach_struct_ops)"), 0));
        }
        Ok(Link { link: l })
    }

    /// Attaches program `name` to the cgroup open at `cgroup`.
    pub fn attach_cgroup(&self, name: &str, cgroup: &OwnedFd) -> io::Result<Link> {
        let n = cstr(name)?;
        // SAFETY: valid object and name.
        let p = unsafe { sys::bpf_object__find_program_by_name(self.obj, n.as_ptr()) };
        if p.is_null() {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("no program {name} in the object"),
            ));
        }
        // SAFETY: `p` is a loaded program; the cgroup fd is open.
        let l = unsafe { sys::bpf_program__attach_cgroup(p, cgroup.as_raw_fd()) };
        if l.is_null() {
            return Err(err(&format!("attaching {name} to the cgroup"), 0));
        }
        Ok(Link { link: l })
    }
}

impl Drop for Object {
    fn drop(&mut self) {
        // SAFETY: `obj` is valid and closed once.
        unsafe { sys::bpf_object__close(self.obj) };
    }
}

/// A BPF link. Dropping it detaches what it attached, unless it was pinned
/// (the pin holds the attachment; `unpin` or deleting the pin file ends it).
pub struct Link {
    link: *mut sys::bpf_link,
}

// SAFETY: as for `Object`.
unsafe impl Send for Link {}

impl Link {
    pub fn pin(&mut self, path: &Path) -> io::Result<()> {
        let p = cpath(path)?;
        // SAFETY: valid link and path.
        let rc = unsafe { sys::bpf_link__pin(self.link, p.as_ptr()) };
        if rc != 0 {
            return Err(err(&format!("pinning a link at {}", path.display()), rc));
        }
        Ok(())
    }

    /// Leaves the attachment in place when the link is dropped (it was
    /// pinned, and the pin keeps it).
    pub fn disconnect(&mut self) {
        // SAFETY: valid link.
        unsafe { sys::bpf_link__disconnect(self.link) };
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        // SAFETY: valid link, destroyed once.
        unsafe { sys::bpf_link__destroy(self.link) };
    }
}

/// Opens a pinned BPF object (map or link) as a file descriptor.
pub fn obj_get(path: &Path) -> io::Result<OwnedFd> {
    let p = cpath(path)?;
    // SAFETY: valid path.
    let fd = unsafe { sys::bpf_obj_get(p.as_ptr()) };
    if fd < 0 {
        return Err(err(&format!("opening {}", path.display()), fd));
    }
    // SAFETY: a new descriptor that we own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Map entry access by descriptor for plain-old-data keys and values.
///
/// # Safety
/// `K` and `V` must be the map's key and value types exactly (size and
/// layout), and contain no pointers.
pub unsafe fn lookup<K, V: Default>(fd: RawFd, key: &K) -> Option<V> {
    let mut v = V::default();
    // SAFETY: the caller guarantees the sizes; both pointers are valid.
    let rc = unsafe { sys::bpf_map_lookup_elem(fd, key as *const K as *const c_void, &mut v as *mut V as *mut c_void) };
    (rc == 0).then_some(v)
}

/// # Safety
/// As for [`lookup`].
pub unsafe fn update<K, V>(fd: RawFd, key: &K, value: &V) -> io::Result<()> {
    // SAFETY: as for lookup.
    let rc = unsafe {
        sys::bpf_map_update_elem(
            fd,
            key as *const K as *const c_void,
            value as *const V as *const c_void,
            sys::BPF_ANY as u64,
        )
    };
    if rc != 0 {
        return Err(err("bpf_map_update_elem", rc));
    }
    Ok(())
}

/// Every key of a hash map.
///
/// # Safety
/// `K` must be the map's key type exactly.
pub unsafe fn keys<K: Default + Copy>(fd: RawFd) -> Vec<K> {
    let mut out = Vec::new();
    let mut prev: Option<K> = None;
    loop {
        let mut next = K::default();
        let pk = prev
            .as_ref()
            .map_or(std::ptr::null(), |k| k as *const K as *const c_void);
        // SAFETY: the caller guarantees the key size.
        let rc = unsafe { sys::bpf_map_get_next_key(fd, pk, &mut next as *mut K as *mut c_void) };
        if rc != 0 || out.len() > 1 << 20 {
            return out;
        }
        out.push(next);
        prev = Some(next);
    }
}

/// Per-CPU values of entry `key` of a per-CPU array of u64, summed.
pub fn percpu_sum(fd: RawFd, key: u32) -> u64 {
    // SAFETY: libbpf_num_possible_cpus has no preconditions.
    let n = unsafe { sys::libbpf_num_possible_cpus() }.max(1) as usize;
    let mut vals = vec![0u64; n];
    // SAFETY: a per-CPU u64 array's lookup writes one u64 per possible CPU.
    let rc = unsafe {
        sys::bpf_map_lookup_elem(
            fd,
            &key as *const u32 as *const c_void,
            vals.as_mut_ptr() as *mut c_void,
        )
    };
    if rc != 0 {
        return 0;
    }
    vals.iter().sum()
}

/// What a ring buffer's consumer does with each record.
pub type Sink = Box<dyn FnMut(&[u8]) + Send>;

/// A ring buffer's consumer: every record is handed to its [`Sink`].
pub struct RingBuf {
    rb: *mut sys::ring_buffer,
    sink: *mut Sink,
}

// SAFETY: the ring buffer is polled from one thread at a time.
unsafe impl Send for RingBuf {}

unsafe extern "C" fn on_record(ctx: *mut c_void, data: *mut c_void, size: sys::size_t) -> i32 {
    // SAFETY: ctx is the boxed sink given to ring_buffer__new, alive until
    // the ring buffer is freed; data points to `size` readable bytes.
    unsafe {
        let sink = &mut *(ctx as *mut Sink);
        sink(std::slice::from_raw_parts(data as *const u8, size as usize));
    }
    0
}

impl RingBuf {
    pub fn new(map_fd: RawFd, sink: Sink) -> io::Result<RingBuf> {
        let sink = Box::into_raw(Box::new(sink));
        // SAFETY: the callback and its context stay valid until free.
        let rb = unsafe { sys::ring_buffer__new(map_fd, Some(on_record), sink as *mut c_void, std::ptr::null()) };
        if rb.is_null() {
            // SAFETY: reclaim the box we leaked above.
            drop(unsafe { Box::from_raw(sink) });
            return Err(err("ring_buffer__new", 0));
        }
        Ok(RingBuf { rb, sink })
    }

    /// Waits up to `timeout_ms` for records and hands over all there are.
    pub fn poll(&mut self, timeout_ms: i32) -> io::Result<usize> {
        // SAFETY: valid ring buffer.
        let n = unsafe { sys::ring_buffer__poll(self.rb, timeout_ms) };
        if n < 0 && n != -libc::EINTR {
            return Err(err("ring_buffer__poll", n));
        }
        Ok(n.max(0) as usize)
    }
}

impl Drop for RingBuf {
    fn drop(&mut self) {
        // SAFETY: freed once; then the sink box is no longer referenced.
        unsafe {
            sys::ring_buffer__free(self.rb);
            drop(Box::from_raw(self.sink));
        }
    }
}

/// Names of every BPF program the kernel holds (root).
pub fn program_names() -> Vec<String> {
    program_infos().into_iter().map(|(n, _, _)| n).collect()
}

/// Every BPF program the kernel holds: name, runs and run time, ns (the
/// last two counted only while run-time statistics are on: [`RunStats`]).
pub fn program_infos() -> Vec<(String, u64, u64)> {
    let mut out = Vec::new();
    let mut id = 0u32;
    loop {
        let mut next = 0u32;
        // SAFETY: plain out-parameter.
        if unsafe { sys::bpf_prog_get_next_id(id, &mut next) } != 0 || out.len() > 1 << 16 {
            return out;
        }
        id = next;
        // SAFETY: a new descriptor (or an error) for an id the kernel gave.
        let fd = unsafe { sys::bpf_prog_get_fd_by_id(id) };
        if fd < 0 {
            continue;
        }
        // SAFETY: we own the new descriptor.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: bpf_prog_info is plain data; the length says how much
        // the kernel may fill.
        let mut info: sys::bpf_prog_info = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of::<sys::bpf_prog_info>() as u32;
        // SAFETY: valid descriptor and buffer of `len` bytes.
        if unsafe { sys::bpf_prog_get_info_by_fd(fd.as_raw_fd(), &mut info, &mut len) } == 0 {
            let name: Vec<u8> = info.name.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
            out.push((
                String::from_utf8_lossy(&name).into_owned(),
                info.run_cnt,
                info.run_time_ns,
            ));
        }
    }
}

/// The kernel counts every BPF program's runs and run time while this
/// lives (BPF_ENABLE_STATS; the count stops when it is dropped, leaving no
/// sysctl changed).
pub struct RunStats {
    _fd: OwnedFd,
}

impl RunStats {
    pub fn enable() -> io::Result<RunStats> {
        // SAFETY: no pointers.
        let fd = unsafe { sys::bpf_enable_stats(sys::BPF_STATS_RUN_TIME) };
        if fd < 0 {
            return Err(err("bpf_enable_stats", fd));
        }
        // SAFETY: a new descriptor we own.
        Ok(RunStats {
            _fd: unsafe { OwnedFd::from_raw_fd(fd) },
        })
    }
}
