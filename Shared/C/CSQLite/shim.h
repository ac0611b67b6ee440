#ifndef BK_CSQLITE_SHIM_H
#define BK_CSQLITE_SHIM_H
#include <sqlite3.h>
#endif
