//! The process's stdin and stdout as async byte streams that the runtime polls itself.
//!
//! tokio's `stdin()` and `stdout()` hand every read and every write to a blocking-pool thread,
//! which costs two thread hand-offs per message (a profile of the stdio front showed a fifth of
//! the gateway's CPU in those threads and most of the rest in waking them). MCP clients start
//! their servers with pipes (or, from Node, socket pairs), and both can be polled like sockets:
//! so when stdin or stdout is one, it is put in non-blocking mode and polled directly. Anything
//! else (a file, a terminal) keeps tokio's blocking-pool streams.
//!
//! Non-blocking mode is a property of the open file, which other processes may share: stdout
//! stays on the blocking pool when it is the same file as stderr (the log would see `EAGAIN`),
//! and each stream puts its file back in blocking mode when dropped.

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::UnixStream;
use tokio::net::unix::pipe;

/// What kind of file a standard stream is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Fifo,
    Socket,
    Other,
}

/// The kind of `fd`, and its identity (device, inode).
fn describe(fd: impl AsFd) -> io::Result<(Kind, (u64, u64))> {
    let file = std::fs::File::from(fd.as_fd().try_clone_to_owned()?);
    let meta = file.metadata()?;
    let kind = match meta.file_type() {
        t if t.is_fifo() => Kind::Fifo,
        t if t.is_socket() => Kind::Socket,
        _ => Kind::Other,
    };
    Ok((kind, (meta.dev(), meta.ino())))
}

/// The process's stdin.
#[derive(Debug)]
pub(crate) enum Stdin {
    Pipe(Option<pipe::Receiver>),
    Socket(Option<UnixStream>),
    Blocking(tokio::io::Stdin),
}

/// The process's stdout.
#[derive(Debug)]
pub(crate) enum Stdout {
    Pipe(Option<pipe::Sender>),
    Socket(Option<UnixStream>),
    Blocking(tokio::io::Stdout),
}

/// Stdin, polled directly when it is a pipe or a socket. Must run inside a tokio runtime.
pub(crate) fn stdin() -> Stdin {
    let fd = || io::stdin().as_fd().try_clone_to_owned();
    polled_or(
        "stdin",
        || tokio::io::stdin().into(),
        || {
            Ok(match describe(io::stdin())?.0 {
                Kind::Fifo => Some(Stdin::Pipe(Some(pipe::Receiver::from_owned_fd(fd()?)?))),
                Kind::Socket => Some(Stdin::Socket(Some(socket(fd()?)?))),
                Kind::Other => None,
            })
        },
    )
}

/// Stdout, polled directly when it is a pipe or a socket that is not also stderr. Must run
/// inside a tokio runtime.
pub(crate) fn stdout() -> Stdout {
    let fd = || io::stdout().as_fd().try_clone_to_owned();
    polled_or(
        "stdout",
        || tokio::io::stdout().into(),
        || {
            let (kind, id) = describe(io::stdout())?;
            let shared_with_stderr = describe(io::stderr()).is_ok_and(|(_, stderr)| stderr == id);
            Ok(match kind {
                _ if shared_with_stderr => None,
                Kind::Fifo => Some(Stdout::Pipe(Some(pipe::Sender::from_owned_fd(fd()?)?))),
                Kind::Socket => Some(Stdout::Socket(Some(socket(fd()?)?))),
                Kind::Other => None,
            })
        },
    )
}

/// The polled stream `attempt` makes, else (it declined or failed) the blocking one.
fn polled_or<T>(
    name: &str,
    blocking: impl FnOnce() -> T,
    attempt: impl FnOnce() -> io::Result<Option<T>>,
) -> T {
    match attempt() {
        Ok(Some(stream)) => stream,
        Ok(None) => blocking(),
        Err(error) => {
            tracing::debug!(%error, "{name} stays on the blocking pool");
            blocking()
        }
    }
}

fn socket(fd: OwnedFd) -> io::Result<UnixStream> {
    let socket = std::os::unix::net::UnixStream::from(fd);
    socket.set_nonblocking(true)?;
    UnixStream::from_std(socket)
}

/// Puts a socket taken out of a stream back in blocking mode.
fn release_socket(socket: Option<UnixStream>) {
    if let Some(socket) = socket {
        let _ = socket.into_std().and_then(|s| s.set_nonblocking(false));
    }
}

const GONE: &str = "standard stream already released";

impl From<tokio::io::Stdin> for Stdin {
    fn from(stdin: tokio::io::Stdin) -> Stdin {
        Stdin::Blocking(stdin)
    }
}

impl From<tokio::io::Stdout> for Stdout {
    fn from(stdout: tokio::io::Stdout) -> Stdout {
        Stdout::Blocking(stdout)
    }
}

impl AsyncRead for Stdin {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stdin::Pipe(Some(pipe)) => Pin::new(pipe).poll_read(cx, buf),
            Stdin::Socket(Some(socket)) => Pin::new(socket).poll_read(cx, buf),
            Stdin::Blocking(stdin) => Pin::new(stdin).poll_read(cx, buf),
            Stdin::Pipe(None) | Stdin::Socket(None) => Poll::Ready(Err(io::Error::other(GONE))),
        }
    }
}

impl AsyncWrite for Stdout {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stdout::Pipe(Some(pipe)) => Pin::new(pipe).poll_write(cx, buf),
            Stdout::Socket(Some(socket)) => Pin::new(socket).poll_write(cx, buf),
            Stdout::Blocking(stdout) => Pin::new(stdout).poll_write(cx, buf),
            Stdout::Pipe(None) | Stdout::Socket(None) => Poll::Ready(Err(io::Error::other(GONE))),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stdout::Pipe(Some(pipe)) => Pin::new(pipe).poll_flush(cx),
            Stdout::Socket(Some(socket)) => Pin::new(socket).poll_flush(cx),
            Stdout::Blocking(stdout) => Pin::new(stdout).poll_flush(cx),
            Stdout::Pipe(None) | Stdout::Socket(None) => Poll::Ready(Ok(())),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // Closing our copy of a descriptor would not close stdout; flushing is all there is.
        self.poll_flush(cx)
    }
}

impl Drop for Stdin {
    fn drop(&mut self) {
        match self {
            Stdin::Pipe(pipe) => drop(pipe.take().map(pipe::Receiver::into_blocking_fd)),
            Stdin::Socket(socket) => release_socket(socket.take()),
            Stdin::Blocking(_) => {}
        }
    }
}

impl Drop for Stdout {
    fn drop(&mut self) {
        match self {
            Stdout::Pipe(pipe) => drop(pipe.take().map(pipe::Sender::into_blocking_fd)),
            Stdout::Socket(socket) => release_socket(socket.take()),
            Stdout::Blocking(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pipe_and_a_socket_are_told_apart_from_a_file() {
        let (read, _write) = std::io::pipe().unwrap();
        assert_eq!(describe(&read).unwrap().0, Kind::Fifo);
        let (socket, _other) = std::os::unix::net::UnixStream::pair().unwrap();
        assert_eq!(describe(&socket).unwrap().0, Kind::Socket);
        let file = std::fs::File::open("Cargo.toml").unwrap();
        assert_eq!(describe(&file).unwrap().0, Kind::Other);
    }

    #[test]
    fn two_handles_on_one_pipe_have_one_identity() {
        let (_read, write) = std::io::pipe().unwrap();
        let copy = write.try_clone().unwrap();
        assert_eq!(describe(&write).unwrap().1, describe(&copy).unwrap().1);
        let (_read2, other) = std::io::pipe().unwrap();
        assert_ne!(describe(&write).unwrap().1, describe(&other).unwrap().1);
    }
}
