/* test_h5table.c — io/qp_h5table.h: rows appended across chunk boundaries
 * and flushes read back by member name through the plain HDF5 API, string
 * attributes, and the errors (over-wide string, duplicate column, existing
 * table) that must leave the table intact. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qp_h5table.h"
#include "qp_test.h"

typedef struct {
    int64_t step;
    char name[6];
    double value;
} rec;

static int read_back(const char *path, rec *out, size_t max, size_t *n, char *attr, size_t attr_len)
{
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) return -1;
    hid_t ds = H5Dopen2(f, "/runs/metrics", H5P_DEFAULT);
    hid_t sp = H5Dget_space(ds);
    hsize_t dims[1];
    H5Sget_simple_extent_dims(sp, dims, NULL);
    *n = (size_t)dims[0];
    /* Members in a different order than the file: HDF5 matches by name. */
    hid_t mt = H5Tcreate(H5T_COMPOUND, sizeof(rec)), st = H5Tcopy(H5T_C_S1);
    H5Tset_size(st, sizeof out->name);
    H5Tset_strpad(st, H5T_STR_NULLPAD);
    H5Tinsert(mt, "value", offsetof(rec, value), H5T_NATIVE_DOUBLE);
    H5Tinsert(mt, "step", offsetof(rec, step), H5T_NATIVE_INT64);
    H5Tinsert(mt, "name", offsetof(rec, name), st);
    int rc = *n <= max && H5Dread(ds, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, out) >= 0 ? 0 : -1;
    hid_t a = H5Aopen(ds, "unit", H5P_DEFAULT), at = H5Aget_type(a);
    char *s = NULL;
    if (rc == 0 && H5Tis_variable_str(at) > 0 && H5Aread(a, at, &s) >= 0 && s) {
        snprintf(attr, attr_len, "%s", s);
        H5free_memory(s);
    } else {
        rc = -1;
    }
    H5Tclose(at);
    H5Aclose(a);
    H5Tclose(st);
    H5Tclose(mt);
    H5Sclose(sp);
    H5Dclose(ds);
    H5Fclose(f);
    return rc;
}

int main(void)
{
    const char *path = "test_h5table.h5";
    char err[512];
    const qp_h5col cols[] = {{"step", QP_H5COL_I64, 0}, {"name", QP_H5COL_STR, 6}, {"value", QP_H5COL_F64, 0}};
    hid_t f = qp_h5file_create(path, err, sizeof err);
    CHECK(f >= 0, "create: %s", err);
    qp_h5table *t = qp_h5table_create(f, "/runs/metrics", cols, 3, 4, err, sizeof err);
    CHECK(t != NULL, "table: %s", err);
    if (!t) return qp_test_finish("test_h5table");
    CHECK(qp_h5table_set_attr(t, "unit", "nats", err, sizeof err) == 0, "attr: %s", err);
    CHECK(qp_h5table_set_attr(t, "unit", "caf\xc3\xa9", err, sizeof err) == 0, "attr replaced: %s", err);
    CHECK(qp_h5_set_attr_str(f, "tool", "test", err, sizeof err) == 0, "file attr: %s", err);

    static const char *names[] = {"a", "bb", "", "sixsix", "e"};
    for (int i = 0; i < 10; i++) {
        qp_h5cell row[3];
        row[0].i64 = (int64_t)i * 1000000007LL;
        row[1].str = names[i % 5];
        row[2].f64 = i == 3 ? INFINITY : i / 3.0;
        CHECK(qp_h5table_append(t, row, err, sizeof err) == 0, "append %d: %s", i, err);
        if (i == 5) CHECK(qp_h5table_flush(t, err, sizeof err) == 0, "flush: %s", err);
    }
    qp_h5cell wide[3] = {{.i64 = 0}, {.str = "toolong"}, {.f64 = 0}};
    CHECK(qp_h5table_append(t, wide, err, sizeof err) == -1 && strstr(err, "column 'name': string of 7 bytes"),
          "over-wide string: %s", err);
    CHECK(qp_h5table_rows(t) == 10, "rows %lld", (long long)qp_h5table_rows(t));

    const qp_h5col dup[] = {{"x", QP_H5COL_F64, 0}, {"x", QP_H5COL_I64, 0}};
    CHECK(qp_h5table_create(f, "/dup", dup, 2, 0, err, sizeof err) == NULL && strstr(err, "duplicate column 'x'"),
          "duplicate column: %s", err);
    CHECK(qp_h5table_create(f, "/runs/metrics", cols, 3, 0, err, sizeof err) == NULL && strstr(err, "cannot create"),
          "existing table: %s", err);
    const qp_h5col nowidth[] = {{"s", QP_H5COL_STR, 0}};
    CHECK(qp_h5table_create(f, "/w", nowidth, 1, 0, err, sizeof err) == NULL && strstr(err, "needs a width"),
          "string without width: %s", err);

    CHECK(qp_h5table_close(t, err, sizeof err) == 0, "close table: %s", err);
    CHECK(qp_h5file_close(f, err, sizeof err) == 0, "close file: %s", err);

    rec r[16];
    size_t n = 0;
    char unit[32] = "";
    CHECK(read_back(path, r, 16, &n, unit, sizeof unit) == 0, "read back");
    CHECK(n == 10, "%zu rows on disk", n);
    for (size_t i = 0; i < n && i < 10; i++) {
        CHECK(r[i].step == (int64_t)i * 1000000007LL, "row %zu step", i);
        CHECK(strncmp(r[i].name, names[i % 5], 6) == 0, "row %zu name '%.6s'", i, r[i].name);
        CHECK(i == 3 ? isinf(r[i].value) : r[i].value == i / 3.0, "row %zu value", i);
    }
    CHECK(!strcmp(unit, "caf\xc3\xa9"), "attribute '%s'", unit);
    CHECK(qp_h5file_create("no/such/dir/x.h5", err, sizeof err) < 0 && strstr(err, "cannot create HDF5 file"),
          "bad path: %s", err);
    unlink(path);
    return qp_test_finish("test_h5table");
}
