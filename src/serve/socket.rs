//! The Unix socket a server listens on, and who owns its path. A socket
//! file outlives the process that bound it (a `kill -9` leaves it behind),
//! so a path may hold a stale socket nobody answers, or the live socket of
//! another server. As other daemons do (systemd's socket units, OpenSSH's
//! agent, X11's lock files), the server first tries to connect: a live
//! server answering there makes this one refuse to start; only a socket
//! that refuses the connection (ECONNREFUSED: no listener) is removed and
//! bound anew. At exit the path is removed only if it is still the file this
//! server bound (same device and inode), never one another server bound since.

use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};

/// A bound Unix listener and the identity of the file it created.
pub struct OwnedSocket {
    pub listener: UnixListener,
    path: PathBuf,
    /// (st_dev, st_ino) of the socket file right after bind.
    id: (u64, u64),
}

impl OwnedSocket {
    /// Bind `path`, refusing if a live server answers there and replacing
    /// only a stale socket file.
    pub fn bind(path: &Path) -> Result<OwnedSocket, String> {
        let shown = path.display();
        if let Ok(m) = std::fs::symlink_metadata(path) {
            if !m.file_type().is_socket() {
                return Err(format!(
                    "--socket {shown}: the path exists and is not a socket; remove it or choose another path"
                ));
            }
            match UnixStream::connect(path) {
                Ok(_) => {
                    return Err(format!(
                        "--socket {shown}: a server is already listening on this socket (another nvmesim serve?); \
                         stop it or choose another path"
                    ))
                }
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                    // Stale: left by a server that is gone.
                    std::fs::remove_file(path)
                        .map_err(|e| format!("--socket {shown}: cannot remove the stale socket: {e}"))?;
                }
                Err(e) => return Err(format!("--socket {shown}: cannot tell whether a server uses it: {e}")),
            }
        }
        let listener = UnixListener::bind(path).map_err(|e| format!("--socket {shown}: {e}"))?;
        let m = std::fs::symlink_metadata(path).map_err(|e| format!("--socket {shown}: {e}"))?;
        Ok(OwnedSocket {
            listener,
            path: path.to_path_buf(),
            id: (m.dev(), m.ino()),
        })
    }

    /// Remove the socket file if it is still the one bound here.
    pub fn remove_if_ours(&self) {
        if let Ok(m) = std::fs::symlink_metadata(&self.path) {
            if (m.dev(), m.ino()) == self.id {
                let _ = std::fs::remove_file(&self.path);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!("nvmesim-socket-{}-{name}", std::process::id()))
    }

    #[test]
    fn a_live_socket_is_refused_a_stale_one_replaced_and_only_ours_removed() {
        let p = temp("a.sock");
        let _ = std::fs::remove_file(&p);
        let first = OwnedSocket::bind(&p).unwrap();
        let e = OwnedSocket::bind(&p)
            .err()
            .expect("a second bind on a live socket must fail");
        assert!(
            e.contains("already listening") && e.contains(&p.display().to_string()),
            "{e}"
        );
        assert!(p.exists(), "the live server's socket stays");
        // The first server goes away without cleaning up: the file is stale.
        drop(first);
        assert!(p.exists());
        let second = OwnedSocket::bind(&p).unwrap();
        // Someone else replaces the path: `second` must not remove theirs.
        std::fs::remove_file(&p).unwrap();
        let third = OwnedSocket::bind(&p).unwrap();
        second.remove_if_ours();
        assert!(p.exists(), "a socket bound by another server was removed");
        third.remove_if_ours();
        assert!(!p.exists());
        // A regular file is never taken for a socket.
        std::fs::write(&p, b"x").unwrap();
        assert!(OwnedSocket::bind(&p).err().unwrap().contains("not a socket"));
        std::fs::remove_file(&p).unwrap();
    }
}
