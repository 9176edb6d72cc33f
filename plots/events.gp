# events.gp — recalibration events by step, layer and kind: one panel per
# run, stacked. Data and variables: fig_events.c. Within a layer's band the
# points are spread by GEMM and operand (bottom to top: qkv, attproj, fc,
# fcproj, gate, up, down; x, w, dy within each).
if (!exists("plotsdir")) plotsdir = system("dirname ".ARG0)
load plotsdir."/style.gp"

# per kind (1..5 = scale_change, overflow, underflow, nonfinite, other)
kpt = "7 9 11 2 6"
kps = "0.35 0.5 0.5 0.7 0.5"
kcolor = "#0072B2 #D55E00 #56B4E9 #000000 #999999"

top_in = 0.5       # room for the key above the panels: up to two rows of kinds
bottom_in = 0.55   # tic labels and the x label below them
gap_in = 0.2       # room for each panel's run label
set multiplot layout n, 1 margins 0.15, 0.97, bottom_in/height, 1 - top_in/height spacing 0, gap_in/height
set xrange [xmin:xmax]
set yrange [ymin:ymax]
if (ymax - ymin <= 13) { set ytics 1 }
set mytics 2
set grid noxtics noytics mytics lc rgb "#d0d0d0" lw 0.6
set ylabel "block"
set key horizontal center top at screen 0.56, screen 1 - 0.03/height maxcols 3 samplen 1 width -1 font ",8"
do for [i=1:n] {
    if (i < n) { set format x ""; unset xlabel } else { set format x "%g"; set xlabel "optimizer step" }
    set label 1 word(titles, i) at graph 0, graph 1 offset 0, 0.45 left noenhanced font ",8"
    if (i > 1) { unset key }
    plot for [k=1:5] datafile index i-1 using 1:($3 == k ? $2 : NaN) with points \
         pt int(word(kpt, k)) ps word(kps, k)+0 lc rgb word(kcolor, k) title word(kindtitles, k) noenhanced
}
unset multiplot
