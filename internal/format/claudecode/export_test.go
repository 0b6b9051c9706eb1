package claudecode

// FlushBytes lets the parts tests deliver a session's rows more often.
var FlushBytes = &flushBytes
