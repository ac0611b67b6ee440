import BuzzKitCore
import Foundation
import Synchronization

/// The executor a lane's tasks prefer (`withTaskExecutorPreference`, see `LaneService`): a job
/// of theirs resumed by a Postgres or Redis connection's thread (a `WorkerThread`, which resumes
/// its caller as the last step of the job that answered it, outside any lock) runs right there,
/// on that thread; any other (resumed by the HTTP/2 client's loop, a timer, a task of Swift's
/// pool, or while a lane's job already runs inline on this thread) goes to the lane's own
/// thread.
///
/// Why: at 500 updates/s a batch holds one request, and its cost was mostly thread wake-ups:
/// every statement, Redis round trip and HTTP/2 batch woke the connection's thread and then a
/// thread of Swift's pool to continue the batch (about twelve per batch). Continuing on the
/// thread that has the answer leaves one wake-up per round trip (the connection's thread), plus
/// one for the HTTP/2 answer (the lane's thread).
///
/// A job that runs inline holds that connection's thread until it suspends again (at its next
/// round trip: a few microseconds of Swift). It never waits on the thread it runs on: what it
/// submits to that connection is queued behind it and runs once it has suspended.
final class LaneExecutor: TaskExecutor {
    private let thread: WorkerThread

    private init(name: String) {
        thread = WorkerThread(name: name)
    }

    /// Lane `number`'s executor, the same for every service in the process (tests make many):
    /// its thread lives as long as the process, since a job enqueued after a stop would be lost,
    /// and with it the task waiting in it.
    static func lane(_ number: Int) -> LaneExecutor {
        made.withLock { made in
            if let executor = made[number] { return executor }
            let executor = LaneExecutor(name: "la-lane-\(number)")
            made[number] = executor
            return executor
        }
    }

    private static let made = Mutex<[Int: LaneExecutor]>([:])

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        if WorkerThread.isCurrent && pthread_getspecific(runningLaneJobKey) == nil {
            Self.runMarked(job, on: executor)
        } else {
            thread.submit { Self.runMarked(job, on: executor) }
        }
    }

    private static func runMarked(_ job: UnownedJob, on executor: UnownedTaskExecutor) {
        pthread_setspecific(runningLaneJobKey, UnsafeRawPointer(bitPattern: 1))
        job.runSynchronously(on: executor)
        pthread_setspecific(runningLaneJobKey, nil)
    }
}

/// Set while a lane's job runs (inline on a connection's thread, or on a lane's thread): a job it
/// resumes in turn goes to its lane's thread instead of nesting on this stack.
private let runningLaneJobKey: pthread_key_t = {
    var key = pthread_key_t()
    pthread_key_create(&key, nil)
    return key
}()
