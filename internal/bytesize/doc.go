// Package bytesize writes a byte count for people in binary units ("7.0 MiB",
// "3.1 GiB"): the one formatter the agent's messages and the download's
// progress share, so the same file size reads the same everywhere.
package bytesize
